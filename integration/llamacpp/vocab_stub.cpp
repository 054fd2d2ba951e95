// The few symbols llama.cpp's grammar code links against beyond its own sources
// (src/llama-grammar.cpp, src/unicode*.cpp): three llama_vocab methods, the logger and
// ggml_abort. The vocabulary is the byte-level one of the llguidance tests
// (tests/constrain_helpers.py): ids 0-255 are the bytes, then one special token per name given
// to make_vocab, in order. Without a model there is no tokenizer; `tokenize` is all the grammar
// reader asks of one: it resolves a `<name>` token in a grammar to exactly one id, or refuses it.

#include "llama-impl.h"
#include "llama-vocab.h"
#include "vocab_stub.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <map>

struct llama_vocab::impl {
    std::vector<std::string> pieces;         // by id: what the token's text is
    std::map<std::string, llama_token> ids;  // special tokens by text
    llama_token eog = -1;
};

// llama_vocab's constructor takes no arguments: make_vocab hands it the token list this way.
static std::vector<std::string> pending_specials;

llama_vocab::llama_vocab() : pimpl(new impl) {
    for (int b = 0; b < 256; b++) {
        pimpl->pieces.emplace_back(1, static_cast<char>(b));
    }
    for (const auto & text : pending_specials) {
        pimpl->ids[text] = static_cast<llama_token>(pimpl->pieces.size());
        pimpl->pieces.push_back(text);
    }
    pimpl->eog = static_cast<llama_token>(pimpl->pieces.size()) - 1;
}

llama_vocab::~llama_vocab() = default;

std::unique_ptr<llama_vocab> make_vocab(const std::vector<std::string> & specials) {
    pending_specials = specials;
    return std::make_unique<llama_vocab>();
}

uint32_t llama_vocab::n_tokens() const {
    return static_cast<uint32_t>(pimpl->pieces.size());
}

bool llama_vocab::is_eog(llama_token id) const {
    return id == pimpl->eog;
}

const std::string & llama_vocab::token_to_piece(llama_token token) const {
    return pimpl->pieces.at(token);
}

// A special token's text (with parse_special) is its one id; any other text is its bytes.
int32_t llama_vocab::tokenize(const char * text, int32_t text_len, llama_token * tokens, int32_t n_tokens_max,
                              bool /*add_special*/, bool parse_special) const {
    std::vector<llama_token> out;
    const std::string whole(text, text_len);
    const auto special = pimpl->ids.find(whole);
    if (parse_special && special != pimpl->ids.end()) {
        out.push_back(special->second);
    } else {
        for (unsigned char c : whole) {
            out.push_back(c);
        }
    }
    if (static_cast<int32_t>(out.size()) > n_tokens_max) {
        return -static_cast<int32_t>(out.size());
    }
    std::copy(out.begin(), out.end(), tokens);
    return static_cast<int32_t>(out.size());
}

void llama_log_internal(ggml_log_level level, const char * format, ...) {
    if (level != GGML_LOG_LEVEL_ERROR && level != GGML_LOG_LEVEL_WARN) {
        return;
    }
    va_list args;
    va_start(args, format);
    vfprintf(stderr, format, args);
    va_end(args);
}

void ggml_abort(const char * file, int line, const char * fmt, ...) {
    fprintf(stderr, "ggml_abort at %s:%d: ", file, line);
    va_list args;
    va_start(args, fmt);
    vfprintf(stderr, fmt, args);
    va_end(args);
    fputc('\n', stderr);
    abort();
}
