import IsletFuzzing

FuzzDriver.main(.serverSentEvents)
