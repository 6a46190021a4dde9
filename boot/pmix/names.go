package pmix

// DefaultLibraries are tried in order by Open: the versioned name that
// OpenPMIx 2 to 5 install (Debian's libpmix2), then the development link.
var DefaultLibraries = []string{"libpmix.so.2", "libpmix.so"}
