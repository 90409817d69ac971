// Package hftokenizer loads a Hugging Face tokenizer directory
// (tokenizer.json and tokenizer_config.json) offline and encodes and
// decodes text exactly as the model's own tokenizer does.
//
// Two families are supported, the ones today's open chat models use:
//
//   - byte-level BPE (GPT-2 alphabet over UTF-8 bytes, a regex Split
//     pre-tokenizer): Qwen2/Qwen3, Llama 3;
//   - SentencePiece-style BPE over characters with byte fallback
//     ("▁" for spaces, "<0xNN>" tokens for unknown bytes): Llama 2,
//     Gemma 3.
//
// Every component of tokenizer.json is compiled at Load into a small, fixed
// pipeline: added-token split → normalizer → pre-tokenizer → BPE →
// post-processor, and a decoder. A component this package does not
// implement (WordPiece, Unigram, an unknown split pattern, …) makes Load
// fail with an error naming it, never a silent approximation.
//
// The split patterns of Qwen2 and Llama 3 need look-ahead, which Go's
// regexp lacks; they are recognised by their exact text and run by a
// hand-written scanner (splitpattern.go).
//
// Behaviour follows tokenizers.js (@huggingface/tokenizers, the code
// behind transformers.js's AutoTokenizer); the tests compare ids and
// decodes with it on thousands of texts.
package hftokenizer
