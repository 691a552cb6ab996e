// grayscale_cu: the types of the problem. Data lives on the GPU (DeviceArray, from utils.h).
#ifndef GRAYSCALE_CU_TASK_H
#define GRAYSCALE_CU_TASK_H

#include <array>

#include "utils.h"

struct GrayscaleInput {
    int size = 0;                  // a size x size image
    DeviceArray<float> rgb;        // size * size * 3 floats, channels last
};

using input_t = GrayscaleInput;
using output_t = DeviceArray<float>;      // size * size floats

constexpr std::array<const char*, 2> ArgumentNames = {"size", "seed"};

#endif
