#include "http/thinking_budget.h"

namespace tf::http {

namespace {

struct Markers {
    model::TokenId open = 0;
    model::TokenId close = 0;
};

class BudgetState : public engine::ConstraintState {
public:
    BudgetState(Markers markers, bool inside, int32_t budget, uint32_t vocab_size)
        : markers_(markers), inside_(inside), budget_(budget), vocab_size_(vocab_size) {}

    std::unique_ptr<engine::ConstraintState> clone() const override { return std::make_unique<BudgetState>(*this); }

    void allowed(std::vector<uint64_t>& bits) const override {
        if (inside_ && spent_ >= budget_) {
            // The budget is spent: close the thought.
            bits.assign((static_cast<size_t>(markers_.close) / 64) + 1, 0);
            bits[markers_.close / 64] |= uint64_t{1} << (markers_.close % 64);
            return;
        }
        bits.assign((vocab_size_ + 63) / 64, ~uint64_t{0});
        if (vocab_size_ % 64 != 0) bits.back() = (uint64_t{1} << (vocab_size_ % 64)) - 1;
    }

    bool advance(model::TokenId token) override {
        if (inside_ && spent_ >= budget_ && token != markers_.close) return false;
        if (token == markers_.open && !closed_) {
            inside_ = true;
        } else if (token == markers_.close) {
            inside_ = false;
            closed_ = true;
        } else if (inside_) {
            ++spent_;
        }
        return static_cast<uint32_t>(token) < vocab_size_;
    }

    bool complete() const override { return false; }

private:
    Markers markers_;
    bool inside_;
    bool closed_ = false;  // one thought per reply: a later "<think>" is text
    int32_t budget_;
    int32_t spent_ = 0;
    uint32_t vocab_size_;
};

class BudgetConstraint : public engine::Constraint {
public:
    BudgetConstraint(Markers markers, bool starts_inside, int32_t budget, uint32_t vocab_size)
        : markers_(markers), starts_inside_(starts_inside), budget_(budget), vocab_size_(vocab_size) {}

    std::unique_ptr<engine::ConstraintState> start() const override {
        return std::make_unique<BudgetState>(markers_, starts_inside_, budget_, vocab_size_);
    }

private:
    Markers markers_;
    bool starts_inside_;
    int32_t budget_;
    uint32_t vocab_size_;
};

}  // namespace

std::shared_ptr<const engine::Constraint> thinking_budget(const tokenizer::Tokenizer& tokenizer,
                                                          const ReasoningMarkers& markers, bool starts_inside,
                                                          int32_t budget_tokens, uint32_t vocab_size) {
    if (!markers.present()) return nullptr;
    const std::optional<tokenizer::TokenId> open = tokenizer.token_to_id(markers.open);
    const std::optional<tokenizer::TokenId> close = tokenizer.token_to_id(markers.close);
    if (!open || !close || *close >= vocab_size) return nullptr;
    // token_to_id also finds a spelling in the vocabulary; the marker must
    // encode to that one token, or replies would spell it otherwise.
    const auto encodes_alone = [&](const std::string& text, tokenizer::TokenId id) {
        const std::vector<tokenizer::TokenId> ids = tokenizer.encode(text, /*allow_special=*/true, /*add_special_tokens=*/false);
        return ids.size() == 1 && ids[0] == id;
    };
    if (!encodes_alone(markers.open, *open) || !encodes_alone(markers.close, *close)) return nullptr;
    return std::make_shared<BudgetConstraint>(Markers{static_cast<model::TokenId>(*open), static_cast<model::TokenId>(*close)},
                                              starts_inside, budget_tokens, vocab_size);
}

}  // namespace tf::http
