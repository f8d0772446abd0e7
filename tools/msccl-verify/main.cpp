// msccl-verify: a thin main over VerifyDriver (tests call runMscclVerify in-process).
#include "VerifyDriver.h"

#include <iostream>

int main(int argc, char **argv) { return msccl::tools::runMscclVerify(argc, argv, std::cout, std::cerr); }
