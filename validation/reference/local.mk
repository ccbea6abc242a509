# validation/reference: the PyTorch reference check (README.md here).
TESTS += validation/reference/test_torch_reference.sh
dist_noinst_SCRIPTS += validation/reference/test_torch_reference.sh validation/reference/gpt_torch.py
EXTRA_DIST += validation/reference/README.md
