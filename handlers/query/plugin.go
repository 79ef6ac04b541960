package query

// ProtocolConfig is a query protocol's configuration as users write it:
// a struct whose exported fields carry JSON tags (snake_case, omitempty;
// the Caddyfile options have the same names), each with a doc comment
// giving its unit and default, its zero values meaning the defaults. It is
// all a protocol gives Caddy: the glue (one registration) unmarshals it
// from JSON or the Caddyfile, calls Validate once, and builds the protocol
// with NewProtocol.
type ProtocolConfig interface {
	// Validate checks the options, each against its range (with
	// internal/bounds, whose range errors the Caddyfile reports at the
	// option's line), and the options together. Errors name the option
	// as users write it.
	Validate() error
	// NewProtocol builds the protocol the configuration describes. It
	// must be cheap and start nothing: it may be called on a zero
	// configuration to ask the protocol's PortFinder before the
	// configuration is complete.
	NewProtocol() (Protocol, error)
}

// Renamed is an option renamed: its former and current names. The former
// still loads, with a warning, and giving both is an error.
type Renamed struct{ Former, Current string }

// Renamer is a ProtocolConfig with renamed options. The former option is
// a field of the same type as the current one, marked Deprecated.
type Renamer interface {
	RenamedOptions() []Renamed
}

// SecretHolder is a ProtocolConfig with options that hold secrets (a
// login's password, a token): the glue replaces the {env.X} placeholders
// in them when the protocol is set up, so that the configuration Caddy
// keeps and serves holds the placeholder, not the secret. A protocol never
// logs a secret or puts it in an answer or an error.
type SecretHolder interface {
	// Secrets returns the secret options by their names as users write
	// them, as pointers into the configuration.
	Secrets() map[string]*string
}

// Chooser is a ProtocolConfig with options that take one of a few values:
// the glue refuses any other in the Caddyfile at the option's line, and
// Validate refuses it in JSON.
type Chooser interface {
	// OptionChoices returns, by option name, the values each such option
	// takes.
	OptionChoices() map[string][]string
}

// OptionChecker is a ProtocolConfig whose string options have a form (an
// IP address, say) the glue checks in the Caddyfile, at the option's
// line; Validate checks it in JSON.
type OptionChecker interface {
	// CheckOption returns why value cannot be option name's, or nil.
	CheckOption(name, value string) error
}
