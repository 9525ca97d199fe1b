package main

var x int = "not an int"

func main() {}
