// Package gqp encodes and decodes GQP, the Gameserver Query Protocol: a client
// sends a query naming one or more commands, and the server answers each
// command, in order, with a status, the command's name and its data.
//
// # Grammar
//
// The source is a working draft (the project's copy is seed
// 003_e66562da93b5290d, read as shared/specs/gqp.md says). Bytes are ASCII
// control codes and strings:
//
//	query    = [SOH encoding ACK] command *(GS command) EOT
//	command  = name [RS arg *(US arg)]
//	response = [SOH encoding ACK] reply *(GS reply) EOT
//	reply    = status name RS data            ; status is two ASCII digits
//	data     = ACK                            ; an empty reply
//	         | STX text                       ; a text reply
//	         | record *(RS record)
//	record   = DC1 string                     ; a string
//	         | DC2 name US value              ; a name and its value
//	         | DC3 item *(US item)            ; a list
//	         | DC4 label *(US item)           ; a labeled list
//
// SOH 01, STX 02, EOT 04, ACK 06, DC1 11, DC2 12, DC3 13, DC4 14, GS 1D,
// RS 1E and US 1F are the only control codes on the wire. ETX 03, DLE 10 and
// ETB 17 are named by the draft but used by none of its rules (the draft's
// table prints ETB's hex and decimal codes the wrong way round: it is 0x17).
//
// # Decisions
//
// The draft leaves much open. Each point below is what this package does, and
// each is tested.
//
//   - Strings are bytes 0x20-0x7E and 0x80-0xFF. Every byte below 0x20 and DEL
//     (0x7F, an ASCII control code, so not "printable") is refused inside a
//     string, by the decoder and by the encoder alike, so the two accept the
//     same strings. Bytes from 0x80 are passed through unchecked: the draft
//     speaks of "plain 8bit ASCII", servers of its era send Latin-1 names and
//     newer ones UTF-8, and the framing needs only the control codes. What
//     the bytes mean is the caller's business.
//   - The examples' quotes and spaces are the draft's "readable format" and
//     are not sent: the status's two digits are followed at once by the name.
//     The draft's identify example also leaves out the DC2 that its own
//     grammar puts before each name/value record; the grammar wins, and the
//     example as printed is refused (see testdata/vectors.txt).
//   - EOT is mandatory and ends every message; nothing may follow it, neither
//     in the same datagram nor in a later one ([wire.ErrTooLong], field
//     "trailer"). EOT cannot occur inside a string, so the first EOT is the
//     end.
//   - A query is one datagram of at most [MaxQuery] bytes, decoded on its own:
//     a server keeps no state for a sender it has not answered. A response
//     may be cut into several datagrams at any byte; the client concatenates
//     them in arrival order until one ends with EOT (the draft: "just start
//     with reading until you get an <EOT>"), which [Reassembler] does within
//     a total of [MaxResponse] bytes. The draft has no sequence numbers, so a
//     reordered or lost datagram shows up as a decode error or a timeout, not
//     as a repaired response; servers should answer in one datagram when they
//     can. ETB blocks, proposed in the draft's discussion and dropped there,
//     are not used.
//   - The encoding header may start a query or a response, never a later
//     command or reply. Its name is a non-empty string; an empty one is
//     [wire.ErrRange]. Only [Identity] is supported, matched without regard to
//     ASCII case (as content-coding and MIME names are). Any other name fails
//     with [ErrUnsupportedEncoding] on field "encoding" and leaves the name in
//     the decoded struct's Encoding, so a server can answer status 40; the
//     body after the header is not looked at, since it is not in identity
//     form. A client decodes a response with the same rule: it only ever asks
//     for identity, so a response in another encoding is an error it can
//     report by name. The encoders refuse to write any other name, since
//     they cannot encode the body to match it.
//   - A command name must not be empty ([wire.ErrRange], field "command
//     name"): no command is called "", and a lone EOT is more likely a probe
//     than a query. A reply name may be empty: the draft's example
//     "20 <RS> <ACK> <EOT>" has none, and it is how a server answers what it
//     could not attribute to a command (statuses 40 and 41).
//   - "name RS" followed by GS or EOT is a command with one empty argument;
//     "name RS US" has two. "name" alone has none. Args distinguishes the
//     three by its length.
//   - Commands may repeat; each gets its own reply. Replies match commands
//     by position; the codec does not check that a response answers a query.
//   - Data is exactly one of: ACK alone, STX and one string, or one or more
//     records. STX text runs to the next GS or EOT; ETX is not used to close
//     it. The draft's examples use STX both for error messages and for
//     echo's output, so the text is not tied to any status.
//   - An RS must be followed by a record: "RS" before GS or EOT, an RS right
//     after the name with no data, and "RS RS" are [ErrSyntax].
//   - A string record has no US; a name/value record has exactly one; a list
//     has at least one item (DC3 alone is one empty item); a labeled list has
//     a label and zero or more items (DC4 alone is an empty label and no
//     items). Anything else is [ErrSyntax].
//   - A status is exactly two ASCII digits, so 00-99. A non-digit is
//     [wire.ErrRange]. A name may start with a digit, so "100x" is status 10
//     for a command "0x": the format cannot tell a third digit, and the
//     encoder never writes one. A code the draft does not define is accepted
//     and exposed as its number ([Status.Known] reports false): the draft
//     lets clients ignore some codes and will grow, and a client can still
//     tell 10 (OK) from anything else.
//   - Sizes are bounded so that decoding what an attacker sends allocates in
//     proportion to [MaxQuery] or [MaxResponse] at worst: at most
//     [MaxCommands] commands of at most [MaxArgs] arguments, [MaxReplies]
//     replies of at most [MaxRecords] records of at most [MaxItems] items.
//     Exceeding any bound is [wire.ErrTooLong]. The encoders refuse the same
//     bounds, so whatever they write decodes.
//
// # Errors and memory
//
// Decoders parse into a caller-owned struct, reusing the capacity of its
// slices (and of the slices inside their elements), and alias the input: the
// decoded byte slices stay valid only while the input does. Once the slices
// have grown to fit, a successful decode allocates nothing; a failed one
// allocates the single [*wire.DecodeError] it returns, which names the field
// and the byte offset and wraps [wire.ErrTruncated], [wire.ErrTooLong],
// [wire.ErrRange], [ErrSyntax], [ErrControlByte] or [ErrUnsupportedEncoding].
// Encoders append to a caller-owned slice, allocate nothing when it has room,
// check everything they write, and on error return the slice at its original
// length. A decoded message re-encodes to exactly its input: the format has
// one spelling for each message.
package gqp
