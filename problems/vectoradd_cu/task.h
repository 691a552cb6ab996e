// vectoradd_cu: the types of the problem. Data lives on the GPU (DeviceArray, from utils.h).
#ifndef VECTORADD_CU_TASK_H
#define VECTORADD_CU_TASK_H

#include <array>

#include <cuda_fp16.h>

#include "utils.h"

struct VectorAddInput {
    int size = 0;                   // A and B are size x size, row-major
    DeviceArray<__half> a, b;
};

using input_t = VectorAddInput;
using output_t = DeviceArray<__half>;

// generate_input's parameters, in order: the keys of a spec in task.yml.
constexpr std::array<const char*, 2> ArgumentNames = {"size", "seed"};

#endif
