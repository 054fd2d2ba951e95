// The test vocabulary (vocab_stub.cpp): bytes 0-255, then `specials` in order; the last special
// token is the end of generation.
#pragma once

#include <memory>
#include <string>
#include <vector>

struct llama_vocab;

std::unique_ptr<llama_vocab> make_vocab(const std::vector<std::string> & specials);
