// LoadError: a Hugging Face directory could not be loaded. The message names
// the file and, where there is one, the tensor or field, and says what was
// expected: "DIR/model.safetensors: tensor model.norm.weight has shape [10],
// expected [384]". Never a crash on malformed input.
#pragma once

#include <stdexcept>
#include <string>

namespace tf::model {

class LoadError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

}  // namespace tf::model
