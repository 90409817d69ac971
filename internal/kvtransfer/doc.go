// Package kvtransfer is the side channel of disaggregated prefill/decode
// serving between mock processes (docs/disaggregation.md).
//
// A prefill worker's Service keeps a directory of the handoffs its engines
// hold blocks for and answers two kinds of peers:
//
//   - the NixlConnector-style pull over HTTP on the worker's own port
//     (POST /kv_transfer/pull, POST /kv_transfer/release), which a decode
//     worker's Client uses to check that the blocks are still held before it
//     models the transfer, and to free them once it has pulled them;
//   - Dynamo's bootstrap rendezvous over TCP on --bootstrap-port: the decode
//     side writes the room id as 8 little-endian bytes and waits for the one
//     byte 0x01, which the prefill side writes once the room's first token
//     and transfer time have passed. Either side may arrive first.
//
// The package does the networking; the engines keep the blocks and model the
// transfer times (internal/engine).
package kvtransfer
