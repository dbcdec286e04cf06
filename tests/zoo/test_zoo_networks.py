"""The model zoo: every network builds, traces, runs and has the published size."""

from __future__ import annotations

import pytest
import torch
import torch.fx

from nnperf import zoo
from nnperf.errors import UnknownModelError

EXPECTED_NAMES = [
    "alexnet", "allcnn_c", "mobilenet_v1", "mobilenet_v2", "resnet18", "resnet34", "simplenet",
    "squeezenet1_0", "squeezenet1_1", "tiny_yolo_v2", "googlenet", "vgg11", "vgg16", "vgg19",
    "shufflenet_v2_x1_0", "mobilenet_v3_large",  # activations and data movement
]
EXPECTED_NAMES += ["unet", "convnext_tiny", "vit_tiny"]  # resizing, normalisation and attention

OUTPUT_SHAPES = {name: (1, 1000) for name in EXPECTED_NAMES}
OUTPUT_SHAPES.update({"allcnn_c": (1, 10), "simplenet": (1, 100), "tiny_yolo_v2": (1, 125, 13, 13)})
OUTPUT_SHAPES["unet"] = (1, 2, 256, 256)

# Published parameter counts, checked within 1%.
PUBLISHED_PARAMS = {
    "alexnet": 61.10e6,
    "mobilenet_v1": 4.23e6,
    "mobilenet_v2": 3.50e6,
    "resnet18": 11.69e6,
    "resnet34": 21.80e6,
    "squeezenet1_0": 1.248e6,
    "squeezenet1_1": 1.235e6,
    "googlenet": 6.62e6,
    "vgg11": 132.86e6,
    "vgg16": 138.36e6,
    "vgg19": 143.67e6,
    "shufflenet_v2_x1_0": 2.28e6,  # activations and data movement
    "mobilenet_v3_large": 5.48e6,
}

# Exact parameter counts worked out by hand from the architecture
# (conv: k*k*Cin*Cout + Cout bias; BatchNorm: 2*C; FC: in*out + out).
EXACT_PARAMS = {
    # All-CNN-C, biases, no BN:
    #   3x3  3->96:    3*9*96 +96  =     2,688
    #   3x3 96->96:   96*9*96 +96  =    83,040  (x2, incl. the stride-2 one) = 166,080
    #   3x3 96->192:  96*9*192+192 =   166,080
    #   3x3 192->192: 192*9*192+192 =  331,968  (x3: two p1, stride 2, p0) = 995,904
    #   1x1 192->192: 192*192+192  =    37,056
    #   1x1 192->10:  192*10+10    =     1,930
    #   2,688 + 166,080 + 166,080 + 995,904 + 37,056 + 1,930 = 1,369,738
    "allcnn_c": 1_369_738,
    # SimpleNet v1, convs with bias + BN(2*C), FC 256->100:
    #   3->64 3x3: 1,792; 64->128: 73,856; 128->128 (x4): 4*147,584 = 590,336;
    #   128->256: 295,168; 256->256 (x2): 2*590,080 = 1,180,160; 256->512: 1,180,160;
    #   512->2048 1x1: 1,050,624; 2048->256 1x1: 524,544; 256->256 3x3: 590,080
    #   convs = 5,486,720
    #   BN: 2*(64 + 5*128 + 3*256 + 512 + 2048 + 2*256) = 2*4,544 = 9,088
    #   FC: 256*100 + 100 = 25,700
    #   5,486,720 + 9,088 + 25,700 = 5,521,508
    "simplenet": 5_521_508,
    # Tiny YOLO v2 (VOC), 3x3 convs without bias + BN(2*C), final 1x1 with bias:
    #   3*9*16 = 432; 16*9*32 = 4,608; 32*9*64 = 18,432; 64*9*128 = 73,728;
    #   128*9*256 = 294,912; 256*9*512 = 1,179,648; 512*9*1024 = 4,718,592;
    #   1024*9*1024 = 9,437,184; 1024*125 + 125 = 128,125  -> convs = 15,855,661
    #   BN: 2*(16+32+64+128+256+512+1024+1024) = 2*3,056 = 6,112
    #   15,855,661 + 6,112 = 15,861,773
    "tiny_yolo_v2": 15_861_773,
}
# resizing, normalisation and attention
PUBLISHED_PARAMS.update({"convnext_tiny": 28.59e6, "vit_tiny": 5.72e6})
# U-Net, 4 levels, base 32, padded 3x3 convs with bias, 2x2/2 up-convolutions, 1x1 head to 2 classes:
#   contracting: 3->32, 32->32; 32->64, 64->64; 64->128, 128->128; 128->256, 256->256; 256->512, 512->512
#     = sum of (9*Cin+1)*Cout = 4,712,224
#   expanding, per level c = 256, 128, 64, 32: up 2c->c 2*2*2c*c + c, convs 2c->c and c->c (18c+1)*c + (9c+1)*c
#     = 3,047,840
#   head 1x1 32->2: 32*2 + 2 = 66;  4,712,224 + 3,047,840 + 66 = 7,760,130
EXACT_PARAMS["unet"] = 7_760_130

# a YOLO-style detector: raw head maps of 4 x 16 DFL box + 80 class channels on 80^2 + 40^2 + 20^2
# anchors; Ultralytics' unfused 3,157,200 params include the DFL's 16 fixed weights, which are not built here
EXPECTED_NAMES.append("yolov8n")
OUTPUT_SHAPES["yolov8n"] = (1, 4 * 16 + 80, 80 * 80 + 40 * 40 + 20 * 20)
PUBLISHED_PARAMS["yolov8n"] = 3_157_200


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Run on one intra-op thread: on a small, busy CI machine this is many times faster."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module", params=EXPECTED_NAMES)
def built(request, one_thread):
    """(entry, module, output) for one network, built and run once per test module."""
    entry = zoo.get(request.param)
    module = entry.build()
    with torch.no_grad():
        output = module(entry.example_input())
    return entry, module, output


def test_registry_order_and_fields():
    assert zoo.names() == EXPECTED_NAMES
    assert [e.name for e in zoo.entries()] == EXPECTED_NAMES
    for entry in zoo.entries():
        assert entry.description and "\n" not in entry.description
        assert entry.variant
        assert len(entry.input_shape) == 4 and entry.input_shape[:2] == (1, 3)
        assert callable(entry.factory)


def test_every_network_is_covered_by_the_size_checks():
    assert set(PUBLISHED_PARAMS) | set(EXACT_PARAMS) == set(EXPECTED_NAMES)


def test_forward_output_shape(built):
    entry, module, output = built
    assert not module.training
    assert tuple(output.shape) == OUTPUT_SHAPES[entry.name]
    assert torch.isfinite(output).all()


def test_parameter_count(built):
    entry, module, _ = built
    count = sum(p.numel() for p in module.parameters())
    if entry.name in EXACT_PARAMS:
        assert count == EXACT_PARAMS[entry.name]
    else:
        assert count == pytest.approx(PUBLISHED_PARAMS[entry.name], rel=0.01)


def test_symbolic_trace_matches_eager(built):
    entry, module, output = built
    traced = torch.fx.symbolic_trace(module)
    with torch.no_grad():
        assert torch.equal(traced(entry.example_input()), output)


def test_get_is_case_insensitive_and_accepts_dashes():
    assert zoo.get("ResNet18").name == "resnet18"
    assert zoo.get("VGG16").name == "vgg16"
    assert zoo.get("squeezenet1-1").name == "squeezenet1_1"
    assert zoo.get("Tiny-YOLO-v2").name == "tiny_yolo_v2"


def test_unknown_name_lists_close_matches():
    with pytest.raises(UnknownModelError) as info:
        zoo.get("resnet50")
    message = str(info.value)
    assert "resnet50" in message
    assert "resnet18" in message and "resnet34" in message


def test_unknown_name_without_close_match_lists_all_names():
    with pytest.raises(UnknownModelError) as info:
        zoo.get("xyzzy")
    for name in EXPECTED_NAMES:
        assert name in str(info.value)


def test_build_is_deterministic_and_leaves_global_rng_alone():
    entry = zoo.get("squeezenet1_1")
    torch.manual_seed(123)
    before = torch.random.get_rng_state()
    a, b, c = entry.build(seed=7), entry.build(seed=7), entry.build(seed=8)
    assert torch.equal(torch.random.get_rng_state(), before)
    sa, sb, sc = a.state_dict(), b.state_dict(), c.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert not all(torch.equal(sa[k], sc[k]) for k in sa)


def test_example_input_is_deterministic():
    entry = zoo.get("allcnn_c")
    x = entry.example_input(seed=3)
    assert tuple(x.shape) == entry.input_shape
    assert torch.equal(x, entry.example_input(seed=3))
    assert not torch.equal(x, entry.example_input(seed=4))
