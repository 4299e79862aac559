#include "http/auth.h"

#include <cstdint>

namespace tf::http {

bool constant_time_equal(std::string_view a, std::string_view b) {
    // Walk the longer of the two so the loop length leaks nothing but it.
    const size_t n = a.size() > b.size() ? a.size() : b.size();
    uint8_t difference = a.size() == b.size() ? 0 : 1;
    for (size_t i = 0; i < n; ++i) {
        const uint8_t x = i < a.size() ? static_cast<uint8_t>(a[i]) : 0;
        const uint8_t y = i < b.size() ? static_cast<uint8_t>(b[i]) : 0;
        difference |= static_cast<uint8_t>(x ^ y);
    }
    return difference == 0;
}

bool authorized(std::string_view api_key, std::string_view authorization) {
    if (api_key.empty()) return true;
    constexpr std::string_view kScheme = "Bearer ";
    if (authorization.size() < kScheme.size()) return false;
    // The scheme is case-insensitive (RFC 9110); the key is not.
    for (size_t i = 0; i < kScheme.size(); ++i) {
        const char c = authorization[i];
        const char lower = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
        const char expected = (kScheme[i] >= 'A' && kScheme[i] <= 'Z') ? static_cast<char>(kScheme[i] - 'A' + 'a') : kScheme[i];
        if (lower != expected) return false;
    }
    return constant_time_equal(authorization.substr(kScheme.size()), api_key);
}

}  // namespace tf::http
