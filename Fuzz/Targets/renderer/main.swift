import IsletFuzzing

FuzzDriver.main(.renderer)
