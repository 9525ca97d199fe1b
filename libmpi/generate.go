package main

//go:generate sh -c "cd .. && go run ./libmpi/gen"
