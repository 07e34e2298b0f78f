import IsletServer
import IsletClient
import ArgumentParser
print("hi")
