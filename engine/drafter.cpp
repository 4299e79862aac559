#include "engine/drafter.h"

#include <algorithm>

namespace tf::engine {

Draft Drafter::next_draft(Stream& stream) const {
    const int32_t room = std::min(options_.max_draft, stream.draft_room());
    if (room <= 0) return {};
    if (options_.own_context) return own_context_draft(stream, room);
    return {};
}

Draft Drafter::own_context_draft(Stream& stream, int32_t room) const {
    Draft draft;
    const ContextMatch match = stream.context().longest_match();
    if (match.length == 0) return draft;
    const int32_t window = best_window(cost_, stream.own_rate().probability(), room);
    if (window == 0) return draft;
    draft.source = DraftSource::own_context;
    draft.match_length = match.length;
    draft.tokens = stream.context().continuation(match, window);
    return draft;
}

}  // namespace tf::engine
