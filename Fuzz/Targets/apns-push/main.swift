import IsletFuzzing

FuzzDriver.main(.apnsPush)
