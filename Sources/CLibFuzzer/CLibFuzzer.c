// SwiftPM builds a C module from at least one source file; the module is its header.
#include "CLibFuzzer.h"
