// The translation unit that builds the gtest binaries' shared precompiled header
// (tests/CMakeLists.txt, weft_test_pch); it has no code of its own.
