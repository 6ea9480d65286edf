/* SPDX-License-Identifier: MIT */
/* pretok_match.c: the single-pattern splits that pre-tokenizers chain
 * after (or before) a full one, each a regex llama.cpp runs with
 * std::regex: the text is cut at every leftmost-longest match, and the
 * pieces between matches stay pieces too. Each pattern here is a small
 * function that says how long the match at a position is (0: none).
 *
 * Classes follow llama.cpp's regex input: an ASCII character is itself
 * (\s is C's isspace, \p{L} A-Za-z, \p{N} 0-9, \p{P} the ASCII
 * punctuation), any other code point stands for its category; patterns
 * with literal ranges (Deepseek's) compare code points, with \s ASCII. */
#include "vocab_impl.h"
#include "unicode.h"

typedef size_t (*match_fn)(const uint32_t *c, size_t n, size_t i);

static bool ascii_space(uint32_t c) { return c == ' ' || (c >= '\t' && c <= '\r'); }
static bool is_space(uint32_t c) { return c < 128 ? ascii_space(c) : rtm_cpt_is_whitespace(c); }
static bool is_class(uint32_t c, int cls) { return rtm_cpt_class(c) == cls; }
static bool is_letter(uint32_t c) { return is_class(c, RTM_CPT_LETTER); }
static bool is_number(uint32_t c) { return is_class(c, RTM_CPT_NUMBER); }
static bool is_punct(uint32_t c) { return is_class(c, RTM_CPT_PUNCT); }
static bool in(uint32_t c, uint32_t lo, uint32_t hi) { return c >= lo && c <= hi; }

/* A run of code points for which f holds, from i. */
static size_t run(const uint32_t *c, size_t n, size_t i, bool (*f)(uint32_t)) {
    size_t k = i;
    while (k < n && f(c[k])) k++;
    return k - i;
}

/* \s?X+ for the class f: an optional leading whitespace (\s), then the run. */
static size_t space_run(const uint32_t *c, size_t n, size_t i, bool (*space)(uint32_t),
                        bool (*f)(uint32_t)) {
    if (i + 1 < n && space(c[i]) && f(c[i + 1])) return 1 + run(c, n, i + 1, f);
    return run(c, n, i, f);
}

//===--- the patterns ---===//

static bool crlf(uint32_t c) { return c == '\r' || c == '\n'; }
static size_t m_newline(const uint32_t *c, size_t n, size_t i) { (void)n; return crlf(c[i]); }      /* [\r\n] */
static size_t m_digit(const uint32_t *c, size_t n, size_t i) { (void)n; return is_number(c[i]); }   /* \p{N} */
static size_t m_digits(const uint32_t *c, size_t n, size_t i) { return run(c, n, i, is_number); }   /* \p{N}+ */

/* \p{N}{1,3} */
static size_t m_digits3(const uint32_t *c, size_t n, size_t i) {
    const size_t k = run(c, n, i, is_number);
    return k < 3 ? k : 3;
}

/* [0-9][0-9][0-9] */
static size_t m_ascii3(const uint32_t *c, size_t n, size_t i) {
    return i + 3 <= n && in(c[i], '0', '9') && in(c[i + 1], '0', '9') && in(c[i + 2], '0', '9') ? 3 : 0;
}

/* [\p{P}\$\+<=>\^~\|`]+ (Falcon) */
static bool falcon_punct(uint32_t c) {
    return is_punct(c) || c == '$' || c == '+' || c == '<' || c == '=' || c == '>' || c == '^' ||
           c == '~' || c == '|' || c == '`';
}
static size_t m_falcon(const uint32_t *c, size_t n, size_t i) { return run(c, n, i, falcon_punct); }

static size_t m_space_letters(const uint32_t *c, size_t n, size_t i) { return space_run(c, n, i, is_space, is_letter); }
static size_t m_space_punct(const uint32_t *c, size_t n, size_t i) { return space_run(c, n, i, is_space, is_punct); }

/* [一-龥ࠀ-一가-퟿]+ */
static bool cjk(uint32_t c) { return in(c, 0x4E00, 0x9FA5) || in(c, 0x0800, 0x4E00) || in(c, 0xAC00, 0xD7FF); }
static size_t m_cjk(const uint32_t *c, size_t n, size_t i) { return run(c, n, i, cjk); }

/* \s+$ */
static size_t m_trailing_space(const uint32_t *c, size_t n, size_t i) {
    const size_t k = run(c, n, i, ascii_space);
    return k > 0 && i + k == n ? k : 0;
}

/* Deepseek LLM's letters: Latin, Greek, Cyrillic, Armenian, Georgian,
 * Cherokee and the other cased scripts, as ranges. */
static const uint32_t dsllm_letters[][2] = {
    {'A', 'Z'}, {'a', 'z'}, {0xB5, 0xB5}, {0xC0, 0xD6}, {0xD8, 0xF6}, {0xF8, 0x1BA}, {0x1BC, 0x1BF},
    {0x1C4, 0x293}, {0x295, 0x2AF}, {0x370, 0x373}, {0x376, 0x377}, {0x37B, 0x37D}, {0x37F, 0x37F},
    {0x386, 0x386}, {0x388, 0x38A}, {0x38C, 0x38C}, {0x38E, 0x3A1}, {0x3A3, 0x3F5}, {0x3F7, 0x481},
    {0x48A, 0x52F}, {0x531, 0x556}, {0x10A0, 0x10C5}, {0x13A0, 0x13F5}, {0x13F8, 0x13FD},
    {0x1C90, 0x1CBA}, {0x1CBD, 0x1CBF}, {0x1D00, 0x1D2B}, {0x1D6B, 0x1D77}, {0x1D79, 0x1D9A},
    {0x1E00, 0x1F15}, {0x1F18, 0x1F1D}, {0x1F20, 0x1F45}, {0x1F48, 0x1F4D}, {0x1F50, 0x1F57},
    {0x1F59, 0x1F59}, {0x1F5B, 0x1F5B}, {0x1F5D, 0x1F5D}, {0x1F5F, 0x1F7D}, {0x1F80, 0x1FB4},
    {0x1FB6, 0x1FBC}, {0x1FBE, 0x1FBE}, {0x1FC2, 0x1FC4}, {0x1FC6, 0x1FCC}, {0x1FD0, 0x1FD3},
    {0x1FD6, 0x1FDB}, {0x1FE0, 0x1FEC}, {0x1FF2, 0x1FF4}, {0x1FF6, 0x1FFC}, {0x2102, 0x2102},
    {0x2107, 0x2107}, {0x210A, 0x2113}, {0x2115, 0x2115}, {0x2119, 0x211D}, {0x2124, 0x2124},
    {0x2126, 0x2126}, {0x2128, 0x2128}, {0x212A, 0x212D}, {0x212F, 0x2134}, {0x2139, 0x2139},
    {0x213C, 0x213F}, {0x2145, 0x2149}, {0x214E, 0x214E}, {0x2183, 0x2184}, {0x2C00, 0x2C7B},
    {0x2C7E, 0x2CE4}, {0x2CEB, 0x2CEE}, {0x2CF2, 0x2CF3}, {0xA640, 0xA66D}, {0xA680, 0xA69B},
    {0xA722, 0xA76F}, {0xA771, 0xA787}, {0xA78B, 0xA78E}, {0xAB70, 0xABBF}, {0xFB00, 0xFB06},
    {0xFB13, 0xFB17}, {0xFF21, 0xFF3A}, {0xFF41, 0xFF5A}, {0x10400, 0x1044F}, {0x104B0, 0x104D3},
    {0x104D8, 0x104FB}, {0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF}, {0x1E900, 0x1E943},
};

static bool dsllm_letter(uint32_t c) {
    for (size_t i = 0; i < sizeof dsllm_letters / sizeof dsllm_letters[0]; i++)
        if (in(c, dsllm_letters[i][0], dsllm_letters[i][1])) return true;
    return false;
}

/* [!-/:-~！-／：-～‘-‟　-。] */
static bool dsllm_punct(uint32_t c) {
    return in(c, '!', '/') || in(c, ':', '~') || in(c, 0xFF01, 0xFF0F) || in(c, 0xFF1A, 0xFF5E) ||
           in(c, 0x2018, 0x201F) || in(c, 0x3000, 0x3002);
}

static size_t m_dsllm_letters(const uint32_t *c, size_t n, size_t i) { return space_run(c, n, i, ascii_space, dsllm_letter); }
static size_t m_dsllm_punct(const uint32_t *c, size_t n, size_t i) { return space_run(c, n, i, ascii_space, dsllm_punct); }

//===--- splitting at the matches ---===//

static const match_fn matchers[RTM_PRE_COUNT] = {
    [RTM_PRE_NEWLINE] = m_newline,         [RTM_PRE_DIGIT] = m_digit,
    [RTM_PRE_DIGITS] = m_digits,           [RTM_PRE_DIGITS3] = m_digits3,
    [RTM_PRE_ASCII_DIGITS3] = m_ascii3,    [RTM_PRE_FALCON_PUNCT] = m_falcon,
    [RTM_PRE_SPACE_LETTERS] = m_space_letters, [RTM_PRE_SPACE_PUNCT] = m_space_punct,
    [RTM_PRE_CJK] = m_cjk,                 [RTM_PRE_TRAILING_SPACE] = m_trailing_space,
    [RTM_PRE_DSLLM_LETTERS] = m_dsllm_letters, [RTM_PRE_DSLLM_PUNCT] = m_dsllm_punct,
};

size_t rtm_pretokenize_match(rtm_pre_t pattern, const uint32_t *cpts, size_t n, uint32_t *word_len) {
    const match_fn m = matchers[pattern];
    size_t n_words = 0, gap = 0;
    for (size_t i = 0; i < n;) {
        const size_t k = m(cpts, n, i);
        if (k == 0) {
            gap++;
            i++;
            continue;
        }
        if (gap > 0) word_len[n_words++] = (uint32_t)gap;
        word_len[n_words++] = (uint32_t)k;
        gap = 0;
        i += k;
    }
    if (gap > 0) word_len[n_words++] = (uint32_t)gap;
    return n_words;
}
