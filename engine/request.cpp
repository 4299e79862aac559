#include "engine/request.h"

namespace tf::engine {

const char* to_string(FinishReason reason) {
    switch (reason) {
        case FinishReason::running: return "running";
        case FinishReason::stop_token: return "stop";
        case FinishReason::stop_string: return "stop";
        case FinishReason::length: return "length";
        case FinishReason::context_full: return "length";
        case FinishReason::cancelled: return "cancelled";
    }
    return "?";
}

DraftCounters& DraftCounters::operator+=(const DraftCounters& o) {
    rounds += o.rounds;
    own_drafted += o.own_drafted;
    own_landed += o.own_landed;
    copies_offered += o.copies_offered;
    copy_drafted += o.copy_drafted;
    copy_landed += o.copy_landed;
    return *this;
}

}  // namespace tf::engine
