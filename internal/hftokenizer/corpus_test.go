package hftokenizer

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"unicode"
)

// Test texts are generated, not stored: a hand-picked set of hard cases
// (variedTexts) and a seeded random batch over a mix of Unicode ranges
// (randomTexts). Both are deterministic.

var baseTexts = []string{
	// English prose.
	"The quick brown fox jumps over the lazy dog.",
	"It was the best of times, it was the worst of times, it was the age of wisdom, it was the age of foolishness...",
	"Mr. O'Neil said: \"Don't panic!\" -- and then he left; nobody knew why (or when).",
	"She's here, they'll come, we're done, I've seen it, I'm sure, he'd know. SHE'S HERE, THEY'LL COME, WE'RE DONE.",
	"'s 'll 'RE 'Ve 'D 'M 't 'tis 'twas rock'n'roll ma'am y'all'd've",
	"Contractions with a curly apostrophe: don’t, it’s, we’re — and quotes “like these”.",
	"Hello world",
	" Hello world",
	"   three leading spaces",
	"trailing spaces   ",
	"A sentence.\nAnother sentence.\n\nA new paragraph after a blank line.",
	"Numbers: 1, 22, 333, 4444, 55555, 666666, 7777777, 3.14159, -42, 1e10, 0x1F, 1,000,000.",
	"Dates 2024-01-31 and times 23:59:59.999Z; phone +1 (555) 123-4567.",
	"Prices: $12.99, €5, £3.50, ¥1000, ₹250, 50% off!!!",
	"URLs like https://example.com/path?query=1&x=y#frag and emails a.b@c.org.",
	// Code.
	"func main() {\n\tfmt.Println(\"hello\")\n\tfor i := 0; i < 10; i++ {\n\t\tx += i\n\t}\n}\n",
	"def f(x):\n    return [y ** 2 for y in range(x) if y % 2 == 0]\n\nprint(f(10))\n",
	"{\"key\": [1, 2, 3], \"nested\": {\"a\": null, \"b\": true}}",
	"<div class=\"x\"><p>Hello <b>world</b></p></div>\n<table><tr><td>1</td></tr></table>",
	"SELECT id, name FROM users WHERE age >= 18 ORDER BY name DESC;",
	"#include <stdio.h>\nint main(void){printf(\"%d\\n\", 1<<3);return 0;}",
	"    indented code\n        more indented\n\t\ttabs\n",
	"x=1;y=2;z=x+y\r\nprint(z)\r\n",
	// CJK and other scripts.
	"我喜欢机器学习和自然语言处理。今天天气很好！",
	"日本語のテキストです。カタカナとひらがな、漢字。",
	"한국어 문장입니다. 안녕하세요!",
	"Русский текст с пунктуацией, цифрами 123 и смешанным English.",
	"العربية: مرحبا بالعالم ١٢٣٤٥",
	"हिन्दी में एक वाक्य। ०१२३",
	"ภาษาไทยไม่มีช่องว่างระหว่างคำ",
	"Ελληνικά: Καλημέρα κόσμε",
	"עברית: שלום עולם",
	"Mixed: English中文日本語한국어Русский123!?",
	// Emoji.
	"Emoji: 😀😃😄 👍🏽 👍🏿 🇺🇸🇯🇵 1️⃣ ❤️",
	"ZWJ family 👨‍👩‍👧‍👦 and 🧑🏽‍💻 and 🏳️‍🌈 and 👩🏻‍❤️‍💋‍👨🏼",
	"Hello👋world🌍!",
	// Combining marks, NFC vs NFD.
	"café naïve résumé Ångström",
	"cafe\u0301 nai\u0308ve re\u0301sume\u0301 A\u030Angstro\u0308m",
	"Tiếng Việt có dấu: Người Việt Nam",
	"Tie\u0302\u0301ng Vie\u0323\u0302t",
	"e\u0301\u0301\u0301 stacked marks a\u0328\u0301 \u0301leading mark",
	"한국어 NFD: \u1112\u1161\u11AB\u1100\u116E\u11A8\u110B\u1165",
	"ﬁ ligature, ① circled, ² superscript, Ⅻ roman, ½ fraction",
	// Whitespace.
	"tab\tseparated\tvalues\t\t\tend",
	"line1\nline2\n\n\nline5\n\n\n\n\n\nline11",
	"windows\r\nline\r\n\r\nendings\r",
	"mixed \n \n\t\n  \r\n   end",
	"\u00A0non-breaking\u00A0space \u3000ideographic\u3000space \u2003em\u2003space",
	"zero\u200Bwidth\u200Cjoiner\u200Dtest\uFEFFbom",
	"next\u0085line and \u2028line sep \u2029para sep",
	"\v vertical \f formfeed",
	// Special-token strings inside user text.
	"<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
	"<|endoftext|>text after end<|endoftext|><|endoftext|>",
	"<think>\nreasoning here\n</think>\n\nanswer",
	"<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>",
	"<s>[INST] hello [/INST] hi</s>",
	"<bos><start_of_turn>user\nhello<end_of_turn>\n<start_of_turn>model\n",
	"not quite special: <|im_start|, <|im_end, <think, </s, <0x41>, <unk>",
	"<tool_call>{\"name\": \"f\"}</tool_call> <table><tr></tr></table>",
	// Long words and long runs.
	"supercalifragilisticexpialidocious antidisestablishmentarianism pneumonoultramicroscopicsilicovolcanoconiosis",
	"Rindfleischetikettierungsüberwachungsaufgabenübertragungsgesetz",
	// Unusual letters and case.
	"ſtrange long s: 'ſ 'ſt and Kelvin K and Å angstrom sign",
	"İstanbul ıi ΣΑΣ σας ß ẞ",
	"\u0000nul \u0001 control \u007F del \u001B[31mred\u001B[0m",
	"\U0001D400\U0001D401 math bold, \U00020000 CJK ext B, \U0001F9D1 person",
	"￥ｆｕｌｌｗｉｄｔｈ １２３",
}

// variedTexts expands baseTexts with digit runs, whitespace runs, long
// words and the usual edge variants (leading space, trailing newline,
// repetition), giving well over 500 texts.
func variedTexts() []string {
	var texts []string
	for _, base := range baseTexts {
		texts = append(texts, base, " "+base, base+"\n", "\n"+base, base+" "+base, strings.ToUpper(base))
	}
	for n := 1; n <= 40; n++ {
		texts = append(texts, strings.Repeat("7", n), "x"+digitRun(n)+"y", " "+digitRun(n))
	}
	for n := 1; n <= 20; n++ {
		texts = append(texts,
			"a"+strings.Repeat(" ", n)+"b",
			strings.Repeat(" ", n),
			"a"+strings.Repeat("\n", n)+"b",
			strings.Repeat("\t", n)+"x",
			"x"+strings.Repeat("\r\n", n),
			"word"+strings.Repeat(" ", n)+"\n"+strings.Repeat(" ", n)+"word",
		)
	}
	for _, n := range []int{50, 100, 255, 256, 257, 300, 1000} {
		texts = append(texts, strings.Repeat("a", n), strings.Repeat("ab", n/2), " "+strings.Repeat("z", n), strings.Repeat("é", n), strings.Repeat("中", n), strings.Repeat("😀", n/4+1))
	}
	texts = append(texts, "", " ", "\n", "\t", "'", "''", "'s", "a", "1", "<", ">", "<|", "|>")
	return texts
}

func digitRun(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteByte(byte('0' + (i*7+3)%10))
	}
	return b.String()
}

// unicodeRanges are the blocks the random texts draw from, with weights.
var unicodeRanges = []struct {
	low, high rune
	weight    int
}{
	{0x20, 0x7E, 30},      // ASCII printable
	{0x09, 0x0D, 4},       // \t \n \v \f \r
	{0x80, 0xFF, 4},       // Latin-1 (incl. U+0085, U+00A0)
	{0x100, 0x24F, 4},     // Latin Extended
	{0x300, 0x36F, 5},     // combining diacritics
	{0x370, 0x3FF, 2},     // Greek
	{0x400, 0x4FF, 3},     // Cyrillic
	{0x590, 0x6FF, 2},     // Hebrew, Arabic
	{0x900, 0x97F, 2},     // Devanagari
	{0xE00, 0xE7F, 2},     // Thai
	{0x1100, 0x11FF, 3},   // Hangul Jamo (NFC composes them)
	{0x1E00, 0x1EFF, 2},   // Latin Extended Additional
	{0x2000, 0x206F, 3},   // general punctuation, spaces, ZWJ
	{0x2070, 0x218F, 2},   // super/subscripts, currency, number forms
	{0x2190, 0x2BFF, 2},   // arrows, math, symbols
	{0x3000, 0x30FF, 3},   // CJK punctuation, kana
	{0x4E00, 0x9FFF, 5},   // CJK
	{0xAC00, 0xD7A3, 3},   // Hangul syllables
	{0xFE00, 0xFE0F, 2},   // variation selectors
	{0xFF00, 0xFFEF, 2},   // fullwidth forms
	{0x1F1E6, 0x1F1FF, 2}, // regional indicators
	{0x1F300, 0x1FAFF, 6}, // emoji
	{0x1F3FB, 0x1F3FF, 2}, // skin tones
	{0x1D400, 0x1D7FF, 1}, // math alphanumerics
	{0x20000, 0x2A6DF, 1}, // CJK extension B
	{0xE000, 0xE0FF, 1},   // private use
}

var randomInserts = []string{"<|im_start|>", "<|endoftext|>", "<s>", "</s>", "<bos>", "<think>", " ", "  ", "\n\n", "'s", "'LL", "\r\n", "\u200D", "123456"}

// assignedInGo reports whether Go's Unicode tables (15.0) know r. Node 20
// carries Unicode 17: characters assigned since 15.0 would be classified
// differently, so the random texts avoid them.
func assignedInGo(r rune) bool {
	return unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z, unicode.Cc, unicode.Cf, unicode.Co)
}

// randomTexts returns n seeded random strings of 1–40 pieces.
func randomTexts(seed uint64, n int) []string {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	total := 0
	for _, r := range unicodeRanges {
		total += r.weight
	}
	pick := func() rune {
		w := rng.IntN(total)
		for _, r := range unicodeRanges {
			if w < r.weight {
				for {
					c := r.low + rune(rng.IntN(int(r.high-r.low+1)))
					if assignedInGo(c) {
						return c
					}
				}
			}
			w -= r.weight
		}
		panic("unreachable")
	}
	texts := make([]string, n)
	for i := range texts {
		var b strings.Builder
		for k := rng.IntN(40) + 1; k > 0; k-- {
			if rng.IntN(12) == 0 {
				b.WriteString(randomInserts[rng.IntN(len(randomInserts))])
				continue
			}
			b.WriteRune(pick())
		}
		texts[i] = b.String()
	}
	return texts
}

// randomIDLists returns n seeded id lists over [0, vocab), with special
// ids and byte tokens mixed in by the caller's choice of extra ids.
func randomIDLists(seed uint64, n, vocab int, extra []uint32) [][]uint32 {
	rng := rand.New(rand.NewPCG(seed, 0x1d5))
	lists := make([][]uint32, n)
	for i := range lists {
		ids := make([]uint32, rng.IntN(30)+1)
		for k := range ids {
			if len(extra) > 0 && rng.IntN(4) == 0 {
				ids[k] = extra[rng.IntN(len(extra))]
			} else {
				ids[k] = uint32(rng.IntN(vocab))
			}
		}
		lists[i] = ids
	}
	return lists
}

func describe(s string) string {
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return fmt.Sprintf("%q", s)
}
