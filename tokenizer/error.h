// The one exception type of tokenizer/: every malformed file, unsupported
// component or invalid input surfaces as a TokenizerError whose message names
// the file, the field and the value.
#pragma once

#include <cstdint>
#include <stdexcept>

namespace tf::tokenizer {

using TokenId = uint32_t;

class TokenizerError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

}  // namespace tf::tokenizer
