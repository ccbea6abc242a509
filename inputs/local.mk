# inputs: input decks (gpt-tiny.in: the default job; llama-tiny.in: its Llama-architecture twin;
# mixtral-tiny.in: llama-tiny with a mixture of experts;
# gpt-mock.in: no data needed) and the script
# that fetches the real tokenizer files and corpus
dist_noinst_DATA += inputs/gpt-tiny.in inputs/gpt-mock.in inputs/llama-tiny.in inputs/mixtral-tiny.in
dist_noinst_SCRIPTS += inputs/fetch-data.sh
