"""The policy: the embedded model built offline (:mod:`.build`, rule build_policy), its tokenizer and
model files (:mod:`.tokenizer`, :mod:`.model`), teacher-forced log-probabilities (:mod:`.logprobs`,
for the warm start and GRPO), and a real pretrained policy assembled without a model hub
(:mod:`.gguf`)."""
