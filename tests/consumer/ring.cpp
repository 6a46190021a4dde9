// ring.cpp - ring.c compiled as C++: acp.h works from C++ unchanged
// (extern "C"), and a C++ program links ACP::acp like a C program.
#include "ring.c"
