// llama.cpp's own grammar matcher behind a line protocol, for integration/llamacpp/.
//
//   driver SPECIAL...      the vocabulary: ids 0-255 are bytes, then the special tokens in order;
//                          the last one is the engine's end of generation (EOG)
//
// Commands on stdin, one answer line each on stdout:
//   grammar N\n<N bytes>  read a GBNF grammar (root rule `root`)  -> "ok" | "error"
//   check K ID...         from the start, feed the K tokens      -> "TAKEN COMPLETE"
//   reset                 back to the start                       -> "ok"
//   take ID               feed one token                          -> "ok" | "refused"
//   mask                  the tokens allowed now (EOG included when the grammar may end) -> "ID..."
//
// A token is fed the way llama.cpp's grammar sampler does: the mask first
// (llama_grammar_apply_impl: a refused token gets logit -inf), then llama_grammar_accept_impl.
// TAKEN is how many tokens passed before the first refused one; COMPLETE (1 or 0) is whether
// the mask then allows EOG, i.e. the grammar accepts what was fed as a whole.

#include "llama-grammar.h"
#include "llama-vocab.h"
#include "vocab_stub.h"

#include <cmath>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Matcher {
    const llama_vocab & vocab;
    llama_grammar * grammar = nullptr;
    llama_grammar_stacks start;  // the stacks at the start: a reset restores them

    explicit Matcher(const llama_vocab & vocab) : vocab(vocab) {}
    ~Matcher() { llama_grammar_free_impl(grammar); }

    bool load(const std::string & text) {
        llama_grammar_free_impl(grammar);
        grammar = llama_grammar_init_impl(&vocab, text.c_str(), "root", false, nullptr, 0, nullptr, 0);
        if (grammar != nullptr) {
            start = grammar->stacks;
        }
        return grammar != nullptr;
    }

    void reset() {
        grammar->stacks = start;  // pointers into grammar->rules, which never move
        grammar->partial_utf8 = {0, 0};
    }

    // The sampler's mask over `ids`: those whose logit it leaves finite.
    std::vector<llama_token> allowed(const std::vector<llama_token> & ids) const {
        std::vector<llama_token_data> data;
        for (llama_token id : ids) {
            data.push_back({id, 0.0f, 0.0f});
        }
        llama_token_data_array cur = {data.data(), data.size(), -1, false};
        llama_grammar_apply_impl(*grammar, &cur);
        std::vector<llama_token> out;
        for (const auto & d : data) {
            if (std::isfinite(d.logit)) {
                out.push_back(d.id);
            }
        }
        return out;
    }

    bool take(llama_token id) {
        if (id < 0 || id >= static_cast<llama_token>(vocab.n_tokens()) || allowed({id}).empty()) {
            return false;
        }
        llama_grammar_accept_impl(*grammar, id);
        return true;
    }
};

llama_token eog_of(const llama_vocab & vocab) {
    return static_cast<llama_token>(vocab.n_tokens()) - 1;
}

}  // namespace

int main(int argc, char ** argv) {
    if (argc < 2) {
        std::cerr << "usage: driver SPECIAL... (the last one is the end of generation)\n";
        return 2;
    }
    const auto vocab = make_vocab(std::vector<std::string>(argv + 1, argv + argc));
    const llama_token eog = eog_of(*vocab);
    std::vector<llama_token> every;
    for (llama_token id = 0; id <= eog; id++) {
        every.push_back(id);
    }
    Matcher matcher(*vocab);
    std::ios::sync_with_stdio(false);

    std::string line;
    while (std::getline(std::cin, line)) {
        std::istringstream in(line);
        std::string command;
        in >> command;
        if (command == "grammar") {
            size_t n = 0;
            in >> n;
            std::string text(n, '\0');
            std::cin.read(text.data(), static_cast<std::streamsize>(n));
            std::cout << (matcher.load(text) ? "ok" : "error") << "\n";
        } else if (matcher.grammar == nullptr) {
            std::cout << "error no grammar\n";
        } else if (command == "check") {
            size_t k = 0;
            in >> k;
            matcher.reset();
            size_t taken = 0;
            for (size_t i = 0; i < k; i++) {
                llama_token id = -1;
                in >> id;
                if (taken == i && matcher.take(id)) {
                    taken++;
                }
            }
            const bool complete = taken == k && !matcher.allowed({eog}).empty();
            std::cout << taken << " " << (complete ? 1 : 0) << "\n";
        } else if (command == "reset") {
            matcher.reset();
            std::cout << "ok\n";
        } else if (command == "take") {
            llama_token id = -1;
            in >> id;
            std::cout << (matcher.take(id) ? "ok" : "refused") << "\n";
        } else if (command == "mask") {
            const auto ids = matcher.allowed(every);
            for (size_t i = 0; i < ids.size(); i++) {
                std::cout << (i ? " " : "") << ids[i];
            }
            std::cout << "\n";
        } else {
            std::cout << "error unknown command\n";
        }
        std::cout.flush();
    }
    return 0;
}
