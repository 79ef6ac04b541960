package caddyquery

// The games page and catalogue as the command builds them, for the tests
// that need every family's protocols registered (package caddyquery_test).
var (
	WriteGamesMarkdown      = writeGamesMarkdown
	GameListing             = gameListing
	QueryProtocolRegistered = queryProtocolRegistered
)
