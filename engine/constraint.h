// Constrained decoding: a request may restrict which tokens its reply can
// hold (a JSON schema, a forced tool call). The engine asks the constraint
// for the allowed set at every position it samples, draft rows included:
// a row's mask is the set after the reply so far plus the draft tokens
// before that row. Masked rows are sampled on the host from their logits
// (host_sampling.h), with the same function and the same (seed, position)
// as an unconstrained row, so a constrained reply is the same tokens
// whether its drafts came from the record, its own context or nowhere; a
// draft token the constraint forbids cuts the draft there, since it could
// never land.
//
// The engine sees only this interface; engine/grammar_constraint.h adapts
// the JSON grammar to it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "model/backend.h"

namespace tf::engine {

// Where one stream is inside its constraint. Driven by one thread (the
// stream's owner), like the Stream that holds it.
class ConstraintState {
public:
    virtual ~ConstraintState() = default;

    virtual std::unique_ptr<ConstraintState> clone() const = 0;

    // bits[id / 64] has bit id % 64 set iff token `id` may come next. Ids
    // past the end of `bits` are not allowed.
    virtual void allowed(std::vector<uint64_t>& bits) const = 0;

    // Takes a token the mask allowed; false if it was not allowed (the
    // state is then unspecified).
    virtual bool advance(model::TokenId token) = 0;

    // Nothing but the end of the reply may follow: the engine ends the
    // reply (finish reason stop) without sampling an end token.
    virtual bool complete() const = 0;
};

// The immutable description a request carries; thread-safe to share
// between the choices of a request and across threads.
class Constraint {
public:
    virtual ~Constraint() = default;
    virtual std::unique_ptr<ConstraintState> start() const = 0;
};

inline bool mask_allows(std::span<const uint64_t> bits, model::TokenId token) {
    const auto word = static_cast<size_t>(token) / 64;
    return token >= 0 && word < bits.size() && ((bits[word] >> (token % 64)) & 1u) != 0;
}

}  // namespace tf::engine
