# inputs: input decks and hardware descriptions
dist_noinst_DATA += inputs/gpt-tiny.in inputs/gpt-mock.in
