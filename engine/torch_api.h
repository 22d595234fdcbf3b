// The LibTorch headers the engine uses, and only those: every engine file
// that needs LibTorch includes this, and the engine's precompiled header is
// made of it (cmake/memaudit.cmake). <torch/torch.h> would also bring data
// loaders, every nn module, FFT, linear algebra and sparse tensors: a fifth
// more for each file to load. TorchScript (<torch/script.h>) is included by
// the three files that load scripted models.
#ifndef MEMAUDIT_ENGINE_TORCH_API_H_
#define MEMAUDIT_ENGINE_TORCH_API_H_

#include <torch/autograd.h>
#include <torch/cuda.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/rnn.h>
#include <torch/optim/adam.h>
#include <torch/optim/rmsprop.h>
#include <torch/optim/sgd.h>
#include <torch/serialize.h>
#include <torch/types.h>
#include <torch/utils.h>

#endif  // MEMAUDIT_ENGINE_TORCH_API_H_
