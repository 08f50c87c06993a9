"""The catalogue the engine is judged on (issue 36): every
`keras.applications` network that builds at a small input, and sequence
models of the kinds users train, each in f32 and in mixed bfloat16. Names
only (no TensorFlow import): models/zoo.py builds them."""

from __future__ import annotations

# name -> (keras.applications class, square input side). 32 where the network
# builds at 32x32; Xception, InceptionV3 and InceptionResNetV2 need 71 or 75.
APPLICATIONS: dict[str, tuple[str, int]] = {
    "app_xception": ("Xception", 71),
    "app_vgg16": ("VGG16", 32),
    "app_vgg19": ("VGG19", 32),
    "app_resnet50": ("ResNet50", 32),
    "app_resnet101": ("ResNet101", 32),
    "app_resnet152": ("ResNet152", 32),
    "app_resnet50v2": ("ResNet50V2", 32),
    "app_resnet101v2": ("ResNet101V2", 32),
    "app_resnet152v2": ("ResNet152V2", 32),
    "app_inceptionv3": ("InceptionV3", 75),
    "app_inceptionresnetv2": ("InceptionResNetV2", 75),
    "app_mobilenet": ("MobileNet", 32),
    "app_mobilenetv2": ("MobileNetV2", 32),
    "app_mobilenetv3small": ("MobileNetV3Small", 32),
    "app_mobilenetv3large": ("MobileNetV3Large", 32),
    "app_densenet121": ("DenseNet121", 32),
    "app_densenet169": ("DenseNet169", 32),
    "app_densenet201": ("DenseNet201", 32),
    "app_nasnetmobile": ("NASNetMobile", 32),
    "app_efficientnetb0": ("EfficientNetB0", 32),
    "app_efficientnetb1": ("EfficientNetB1", 32),
    "app_efficientnetb2": ("EfficientNetB2", 32),
    "app_efficientnetb3": ("EfficientNetB3", 32),
    "app_efficientnetv2b0": ("EfficientNetV2B0", 32),
    "app_efficientnetv2b1": ("EfficientNetV2B1", 32),
    "app_efficientnetv2b2": ("EfficientNetV2B2", 32),
    "app_convnexttiny": ("ConvNeXtTiny", 32),
    "app_convnextsmall": ("ConvNeXtSmall", 32),
}

# Sequence models of models/zoo.py: an encoder, a decoder with a causal
# mask, an encoder-decoder, LSTM and GRU.
SEQUENCE_MODELS = ("transformer", "decoder", "encdec", "lstm", "gru")

# A catalogue name with this suffix trains under keras.mixed_precision's
# "mixed_bfloat16" policy.
BF16_SUFFIX = "_bf16"


def base_name(name: str) -> tuple[str, bool]:
    """(the model's name without the policy suffix, whether mixed bf16)."""
    if name.endswith(BF16_SUFFIX):
        return name[: -len(BF16_SUFFIX)], True
    return name, False


def catalogue_names(bf16: bool = True) -> list[str]:
    names = [*APPLICATIONS, *SEQUENCE_MODELS]
    return names + [n + BF16_SUFFIX for n in names] if bf16 else names
