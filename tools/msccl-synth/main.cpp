//===- main.cpp - msccl-synth: a thin main over runSynth (Synth.h) --------------------------===//
#include "Synth.h"

#include <iostream>

int main(int argc, char **argv) { return msccl::tools::synth::runSynth(argc, argv, std::cout, std::cerr); }
