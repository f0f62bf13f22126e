// Only a header: the function is in libFuzzer.
