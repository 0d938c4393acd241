package conduit

// Version is conduit's version, sent to servers as the client's
// implementation version.
const Version = "0.4.0"
