#include "grammar/grammar_constraint.h"

#include <algorithm>

namespace tf::grammar {

TokenVocabulary::TokenVocabulary(std::vector<std::string> token_bytes, std::vector<int32_t> ends)
    : bytes(token_bytes), end_tokens(ends), masker(std::move(token_bytes), std::move(ends)) {}

namespace {

class GrammarProgress final : public engine::ConstraintState {
public:
    GrammarProgress(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenVocabulary> vocabulary)
        : grammar_(std::move(grammar)), vocabulary_(std::move(vocabulary)), state_(grammar_->start()) {}

    std::unique_ptr<engine::ConstraintState> clone() const override { return std::make_unique<GrammarProgress>(*this); }

    void allowed(std::vector<uint64_t>& bits) const override { vocabulary_->masker.allowed(*grammar_, state_, bits); }

    bool advance(model::TokenId token) override {
        const std::vector<int32_t>& ends = vocabulary_->end_tokens;
        if (std::find(ends.begin(), ends.end(), token) != ends.end()) return grammar_->accepts_end(state_);
        if (token < 0 || static_cast<size_t>(token) >= vocabulary_->bytes.size()) return false;
        const std::string& bytes = vocabulary_->bytes[static_cast<size_t>(token)];
        return !bytes.empty() && grammar_->advance(state_, bytes);
    }

    bool complete() const override { return grammar_->accepts_end(state_) && !grammar_->can_continue(state_); }

private:
    std::shared_ptr<const Grammar> grammar_;
    std::shared_ptr<const TokenVocabulary> vocabulary_;
    GrammarState state_;
};

}  // namespace

std::unique_ptr<engine::ConstraintState> GrammarConstraint::start() const {
    return std::make_unique<GrammarProgress>(grammar_, vocabulary_);
}

}  // namespace tf::grammar
