import IsletFuzzing

FuzzDriver.main(.androidInputs)
