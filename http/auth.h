// API-key checks for /v1/* routes. Pure; thread-safe.
#pragma once

#include <string_view>

namespace tf::http {

// Compares in time that depends only on the lengths, so response timing
// does not reveal how much of a guessed key was right.
bool constant_time_equal(std::string_view a, std::string_view b);

// True when `authorization` (the header's value) is "Bearer <api_key>".
// An empty api_key means the server has none: everything is allowed.
bool authorized(std::string_view api_key, std::string_view authorization);

}  // namespace tf::http
