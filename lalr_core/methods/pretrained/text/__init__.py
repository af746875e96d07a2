"""The shared text setting of chapters 01 (LALR) and 03 (NTK linearisation).

* `corpus`: D-SYN-TXT, the seeded synthetic language (vocabulary 64), its tasks SENT / ACC /
  LONG / STARS, the pretraining corpus and the OOD test sets of X-L15;
* `tinytf`: TinyTF, the hand-written pre-LN encoder (separate q/k/v/o projections) with a
  [CLS] classifier head or a tied MLM head;
* `mlm`: the masking rule, the MLM loss and its held-out evaluation;
* `tasks`: the training-loop tasks ``"text_mlm"`` and ``"text_classification"`` (registered in
  ``TASKS`` on import of this package), the cached pretraining unit and `pretrained_backbone`;
* `probe`: the ``"text_splits"`` callback (OOD splits and forgetting during a run);
* `hf`: ``"hf_text_classification"``, full fine-tuning of a Hugging Face ``transformers``
  encoder on GLUE SST-2 / CoLA. It needs the optional extra ``nlp`` and is not imported
  here (``from lalr_core.methods.pretrained.text.hf import HFSequenceClassificationTask``); the task
  registry finds it by name.

Quick start (chapter 01's protocol P-LALR)::

    from lalr_core.core.loop.train import train
    from lalr_core.methods.pretrained.text import finetuning_config, pretraining_config
    pre = pretraining_config()                       # MLM, 3 epochs, 4000 sequences
    res = train(finetuning_config("sent", pretrained=pre, seed=0))  # pretrains once if needed
"""

from lalr_core.methods.pretrained.text.probe import TextSplitProbe
from lalr_core.methods.pretrained.text.tasks import (
    MLMTask,
    SequenceClassificationTask,
    TextData,
    finetuning_config,
    mlm_pretraining,
    pretrained_backbone,
    pretrained_mlm_head,
    pretraining_config,
)
from lalr_core.methods.pretrained.text.tinytf import (
    TinyTFClassifier,
    TinyTFConfig,
    TinyTFEncoder,
    TinyTFMLM,
)

__all__ = ["MLMTask", "SequenceClassificationTask", "TextData", "TextSplitProbe",
           "TinyTFClassifier", "TinyTFConfig", "TinyTFEncoder", "TinyTFMLM",
           "finetuning_config", "pretrained_backbone", "pretrained_mlm_head",
           "pretraining_config", "mlm_pretraining"]
