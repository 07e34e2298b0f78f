import IsletFuzzing

FuzzDriver.main(.layout)
