#include "http/api_error.h"

#include <nlohmann/json.hpp>

namespace tf::http {

std::string ApiError::type_name() const {
    if (!type.empty()) return type;
    switch (status) {
        case 400: return "invalid_request_error";
        case 401: return "authentication_error";
        case 404: return "not_found_error";
        case 405: return "invalid_request_error";
        case 409: return "conflict_error";
        case 413: return "invalid_request_error";
        case 503: return "overloaded_error";
        default: return status >= 500 ? "server_error" : "invalid_request_error";
    }
}

std::string ApiError::body() const {
    nlohmann::json error = {{"message", what()}, {"type", type_name()}};
    error["code"] = code.empty() ? nlohmann::json(status) : nlohmann::json(code);
    error["param"] = param.empty() ? nlohmann::json(nullptr) : nlohmann::json(param);
    return nlohmann::json{{"error", error}}.dump();
}

}  // namespace tf::http
