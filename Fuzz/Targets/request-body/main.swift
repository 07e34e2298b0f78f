import IsletFuzzing

FuzzDriver.main(.requestBody)
