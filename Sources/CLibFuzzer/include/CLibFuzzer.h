#ifndef ISLET_CLIBFUZZER_H
#define ISLET_CLIBFUZZER_H

#include <stddef.h>
#include <stdint.h>

/// libFuzzer's driver, called from a program's own `main`: it parses libFuzzer's flags from
/// `argv` and calls `callback` with every input. Linked only in fuzz builds (`ISLET_FUZZ=1`,
/// `-sanitize=fuzzer`); plain builds never reference it.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
