import IsletFuzzing

FuzzDriver.main(.tokenRequest)
