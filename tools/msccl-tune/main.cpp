//===- main.cpp - msccl-tune: a thin main over runTune (Tune.h) -----------------------------===//
#include "Tune.h"

#include <iostream>

int main(int argc, char **argv) { return msccl::tools::tune::runTune(argc, argv, std::cout, std::cerr); }
