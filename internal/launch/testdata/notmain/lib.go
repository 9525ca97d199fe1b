package notmain

// X is exported so the package is not empty.
var X = 1
