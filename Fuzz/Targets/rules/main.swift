import IsletFuzzing

FuzzDriver.main(.rules)
