// Drafter: the copy window. Each round it builds a decoding stream's draft:
// first from the stream's own context, then, when the offer policy says a
// record copy is expected to land more, from the record. The draft is as
// long as it pays under the backend's cost curve.
//
// A record copy needs a match of at least 16 tokens and must be expected to
// land strictly more than the stream's recent own drafts; the own context is
// consulted first and keeps the draft on a tie (docs/recall.md, "Offer policy").
//
// The record-wide policy lives in recall::Record::offers() (thread-safe);
// each stream carries its own recall::StreamOfferState.
// Not thread-safe (one per engine thread); the record may be shared.
#pragma once

#include "engine/draft_window.h"
#include "engine/stream.h"
#include "recall/record.h"

namespace tf::engine {

struct DrafterOptions {
    int32_t max_draft = 32;           // longest window, in tokens
    bool own_context = true;          // draft from the stream's own context
    int32_t own_context_tokens = 32;  // longest own-context draft (serve --draft-tokens)
};

class Drafter {
public:
    // `record` may be null (Recall off).
    Drafter(CostCurve cost, DrafterOptions options, recall::Record* record = nullptr)
        : cost_(std::move(cost)), options_(options), record_(record) {}

    // The synchronous driver (Engine): own context, then the record.
    Draft next_draft(Stream& stream) const;
    // After the stream's round landed: feeds the outcome to both policies.
    void after_landing(Stream& stream) const;

    // The same in pieces, for drivers that reach the record through other
    // threads (the actors): the stream's side runs where the stream lives,
    // record_draft() and record_outcome() where the record is.
    int32_t start_round(Stream& stream) const;  // returns the room for a draft
    Draft own_context_draft(Stream& stream, int32_t room) const;
    bool may_ask_record(Stream& stream) const { return record_ && stream.offer_state().may_ask_record(); }
    static std::vector<uint32_t> lookup_tail(const Stream& stream);
    static Draft record_draft(recall::Record& record, const CostCurve& cost, std::span<const uint32_t> tail,
                              int32_t room, double own_expected);
    static void stream_outcome(Stream& stream);

    // Grafted lanes: the record's continuation as a second branch of the
    // round, verified beside the own-context draft. A grafted lane consults the
    // record every round while its grafts are landing, else only every eighth
    // round (docs/recall.md, "Offer policy"). Empty when the stream does not
    // ask this round or the record has no match; `asked` says whether it asked.
    Draft graft_draft(Stream& stream, int32_t room, bool* asked) const;
    static void record_outcome(recall::Record& record, const Draft& draft, int32_t landed_drafts);

    const CostCurve& cost() const { return cost_; }
    recall::Record* record() const { return record_; }

    // How many of the stream's last tokens a record lookup is given: enough
    // to tell the 64-or-more bucket from the shorter ones, with room to spare.
    static constexpr int32_t kLookupTail = 256;

private:
    CostCurve cost_;
    DrafterOptions options_;
    recall::Record* record_;
};

}  // namespace tf::engine
