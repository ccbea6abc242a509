# validation/tests
