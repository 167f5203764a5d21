"""The exception family: status -> class, message contents, INFO statuses are not errors."""
from __future__ import annotations

import pytest

from hsapy import errors
from hsapy._hsa import check


@pytest.mark.parametrize("status, family", [
    (0x1001, errors.InvalidArgumentError),
    (0x1006, errors.InvalidArgumentError),
    (40, errors.InvalidArgumentError),
    (0x1008, errors.OutOfResourcesError),
    (0x1003, errors.OutOfResourcesError),
    (0x100B, errors.NotInitializedError),
    (0x1010, errors.CodeObjectStatusError),
    (0x1013, errors.CodeObjectStatusError),
    (0x1009, errors.InvalidPacketError),
    (41, errors.MemoryFaultError),
    (43, errors.MemoryFaultError),
    (0x1016, errors.QueueError),
    (42, errors.QueueError),
    (0x1000, errors.HSAError),
])
def test_status_maps_to_its_family(status, family):
    exc = errors.error_for(status, "hsa_something")
    assert type(exc) is family
    assert exc.status == status and exc.function == "hsa_something"


def test_message_names_function_status_and_hint():
    exc = errors.error_for(0x1008, "hsa_init", "runtime text")
    text = str(exc)
    assert text.startswith("hsa_init failed: HSA_STATUS_ERROR_OUT_OF_RESOURCES (runtime text)")
    assert "/dev/kfd" in text and "sim" in text


@pytest.mark.parametrize("status", [0x0, 0x1, 44])
def test_success_and_info_statuses_are_results_not_errors(status):
    assert not errors.is_error(status)
    check(status, "hsa_whatever")  # does not raise


def test_check_raises_with_function_name():
    with pytest.raises(errors.InvalidArgumentError, match="hsa_queue_create"):
        check(0x1001, "hsa_queue_create")


def test_user_input_errors_are_also_builtin_errors():
    assert issubclass(errors.HsapyValueError, ValueError)
    assert issubclass(errors.HsapyTypeError, TypeError)
    assert issubclass(errors.WaitTimeoutError, TimeoutError)
    assert issubclass(errors.HSAError, errors.HsapyError)


def test_every_status_name_is_a_cdef_enum_constant():
    from hsapy._hsa import ffi

    for status, name in errors.STATUS_NAMES.items():
        if name.startswith("HSA_STATUS_ERROR_") and status >= 0x1000:
            assert ffi.typeof("hsa_status_t").relements[name] == status


def test_every_cdef_status_has_a_name_and_a_family_or_is_a_result():
    from hsapy._hsa import ffi

    for name, status in ffi.typeof("hsa_status_t").relements.items():
        assert errors.STATUS_NAMES[status] == name
        exc = errors.error_for(status, "hsa_x")
        assert name in str(exc)


@pytest.mark.parametrize("status", [0x1001, 0x1002, 0x1003, 0x1007, 0x1008, 0x1009, 0x100B,
                                    0x1010, 0x1016, 40, 41, 42, 43])
def test_common_failures_carry_a_hint(status):
    text = str(errors.error_for(status, "hsa_x"))
    hint = text.split(": ", 1)[1].split(". ", 1)
    assert len(hint) == 2 and len(hint[1]) > 20, text


def test_errors_survive_pickling():
    import pickle

    exc = errors.error_for(0x1009, "queue error callback", "queue 3")
    copy = pickle.loads(pickle.dumps(exc))
    assert type(copy) is errors.InvalidPacketError
    assert (copy.status, copy.function, str(copy)) == (exc.status, exc.function, str(exc))


def test_out_of_resources_names_kfd_only_for_hsa_init():
    from hsapy.errors import error_for

    assert "/dev/kfd" in str(error_for(0x1008, "hsa_init"))
    exhausted = str(error_for(0x1008, "hsa_amd_memory_pool_allocate"))
    assert "/dev/kfd" not in exhausted and "free what is no longer needed" in exhausted
