//===- main.cpp - msccl-run entry point (all logic is in Driver.cpp) ---------------------===//
#include "Driver.h"

#include <iostream>

int main(int argc, char **argv) { return msccl::run::runDriver(argc, argv, std::cout, std::cerr); }
