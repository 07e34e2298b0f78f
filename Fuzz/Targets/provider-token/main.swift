import IsletFuzzing

FuzzDriver.main(.providerToken)
