// ApiError: what a route answers when a request cannot be served, in
// OpenAI's shape {"error": {"message", "type", "param", "code"}}. Messages
// name the field and the value so a user can act on them.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace tf::http {

struct ApiError : std::runtime_error {
    ApiError(int status, std::string message, std::string param = "", std::string type = "")
        : std::runtime_error(std::move(message)), status(status), param(std::move(param)), type(std::move(type)) {}

    int status;         // HTTP status
    std::string param;  // the offending field, when there is one
    std::string type;   // empty: derived from the status
    std::string code;   // a machine-readable code such as "model_not_found"; empty: the HTTP status
    // Response headers the status calls for: Allow (405), Retry-After (503),
    // WWW-Authenticate (401).
    std::vector<std::pair<std::string, std::string>> headers;

    std::string type_name() const;
    // {"error": {...}} as JSON text.
    std::string body() const;
};

inline ApiError bad_request(std::string param, std::string message) {
    return ApiError(400, std::move(message), std::move(param));
}

}  // namespace tf::http
