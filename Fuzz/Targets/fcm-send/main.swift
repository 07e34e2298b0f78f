import IsletFuzzing

FuzzDriver.main(.fcmSend)
